"""families/tcgen05"""
