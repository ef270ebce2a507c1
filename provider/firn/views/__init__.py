"""firn.views"""
