"""firn.catalog"""
