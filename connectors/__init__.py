"""Connectors (installed as ``streamarms.connectors``): sources and sinks around the core.

They depend on the core; the core never imports them.
"""
