"""supervisor"""
