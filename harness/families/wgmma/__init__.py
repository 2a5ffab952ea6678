"""families/wgmma"""
