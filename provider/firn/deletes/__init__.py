"""firn.deletes"""
