#!/usr/bin/env bash
# Installs the dashboard's browser libraries from package-lock.json and copies
# the files the pages load into build/, which Django serves as static files
# (STATICFILES_DIRS). bin/setup runs this when the lockfile changes.
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund --loglevel=error
rm -rf build.tmp && mkdir -p build.tmp/vendor
cp node_modules/chart.js/dist/chart.umd.min.js build.tmp/vendor/chart.umd.min.js
cp node_modules/@picocss/pico/css/pico.min.css build.tmp/vendor/pico.min.css
rm -rf build && mv build.tmp build
