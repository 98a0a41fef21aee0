"""Test helpers shared by several test packages (servers on 127.0.0.1 the tests start)."""
