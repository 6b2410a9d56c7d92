"""mqtt"""
