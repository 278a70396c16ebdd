"""Exports of the execution model to other tools' formats (Perfetto)."""
