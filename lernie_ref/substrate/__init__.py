"""substrate"""
