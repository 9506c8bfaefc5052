"""Deliberately broken ports the tests check the harness with (see the README)."""
