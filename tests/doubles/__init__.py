"""Test doubles: small stand-ins for external services, named as such, used only by the tests."""
