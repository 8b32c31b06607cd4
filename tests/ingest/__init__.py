"""Tests of trainscale.ingest (a package so that module names such as test_power stay unique)."""
