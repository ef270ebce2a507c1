"""firn.spark"""
