"""What the end-to-end suites share (tests/e2e/lib/README.md)."""
