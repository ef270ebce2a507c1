"""firn.maintenance"""
