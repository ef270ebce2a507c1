"""firn.manifests"""
