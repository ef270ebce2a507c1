"""firn.io"""
