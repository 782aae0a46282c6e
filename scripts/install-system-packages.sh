#!/bin/sh
# The system packages the test suite needs besides Python's: Debian's Chromium and its
# chromedriver, which tests/sim/test_report_html.py drives to check report.html, and Debian's
# Prometheus server, which tests/metrics/test_prometheus_scrape.py runs against pinnace up, and
# Debian's etcd (etcd-server), which the store's tests (tests/etcd.py) start for the etcd store.
# Nothing is done when they are there already; otherwise apt-get installs them (as root, as CI
# runs).
set -eu
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1 \
  && command -v prometheus >/dev/null 2>&1 && command -v etcd >/dev/null 2>&1; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium chromium-driver prometheus \
  etcd-server etcd-client
