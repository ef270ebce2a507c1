"""firn.table"""
