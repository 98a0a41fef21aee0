"""Adapters for agent runtimes, one module per runtime, each behind its own extra.

Nothing is imported here: ``import knowhub.integrations.langgraph`` needs
``pip install 'knowhub[langgraph]'``, and no other adapter pays for it.
"""
