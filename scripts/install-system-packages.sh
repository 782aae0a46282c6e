#!/bin/sh
# The system packages the test suite needs besides Python's: Debian's Chromium and its
# chromedriver, which tests/sim/test_report_html.py drives to check report.html.
set -eu
apt-get update
apt-get install -y --no-install-recommends chromium chromium-driver
