"""firn.expressions"""
