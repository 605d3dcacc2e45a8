"""The real-data verification study, ``mdcert study realdata`` (docs/theory.md section 6.6)."""
