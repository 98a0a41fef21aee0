"""Adapters of knowhub for agent runtimes, one module per runtime, each behind an extra.

Nothing is imported here: each adapter pulls in its runtime's package only when used.
"""
