#!/bin/bash
# WebKitGTK via WebKitWebDriver + MiniBrowser under Xvfb :77
cd "$(dirname "$0")"
Xvfb :77 -screen 0 1280x800x24 >/dev/null 2>&1 & echo $! > xvfb.pid
sleep 1
DISPLAY=:77 WebKitWebDriver --port=4477 >/dev/null 2>&1 & echo $! > wkdriver.pid
sleep 1
