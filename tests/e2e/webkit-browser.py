#!/usr/bin/python3
"""A WebKitGTK browser for WebKitWebDriver, with a persistent profile.

MiniBrowser, the browser Debian ships with WebKitGTK, makes its website data
ephemeral whenever it runs under automation; WebKit then gives a page no
origin private file system (getDirectory() rejects with UnknownError) and
IndexedDB only in memory. This browser is what WebKitWebDriver starts
instead (the session's `binary`): the same engine, with its website data in
the directory given by --data-dir, so that storage persists across reloads,
windows and restarts of the browser as it does for a user.

Arguments: --automation (as WebKitWebDriver passes it), --data-dir=DIR,
and --features=+Name,+Name (web platform features to turn on, as
MiniBrowser's option of that name).
"""

import sys

import gi

gi.require_version("Gtk", "3.0")
gi.require_version("WebKit2", "4.1")
from gi.repository import Gtk, WebKit2  # noqa: E402


def option(name):
    prefix = f"--{name}="
    return next((a[len(prefix) :] for a in sys.argv[1:] if a.startswith(prefix)), None)


data_dir = option("data-dir")
if not data_dir:
    sys.exit("webkit-browser.py: --data-dir=DIR is required")
features = {f.lstrip("+") for f in (option("features") or "").split(",") if f}

manager = WebKit2.WebsiteDataManager(base_data_directory=f"{data_dir}/data", base_cache_directory=f"{data_dir}/cache")
context = WebKit2.WebContext.new_with_website_data_manager(manager)
context.set_automation_allowed(True)

settings = WebKit2.Settings()
known = WebKit2.Settings.get_all_features()
for i in range(known.get_length()):
    feature = known.get(i)
    if feature.get_identifier() in features:
        settings.set_feature_enabled(feature, True)
        features.discard(feature.get_identifier())
if features:
    sys.exit(f"webkit-browser.py: unknown features {sorted(features)}")

windows = []


def create_web_view(_session):
    view = WebKit2.WebView(web_context=context, settings=settings, is_controlled_by_automation=True)
    window = Gtk.Window()
    window.set_default_size(1280, 800)
    window.add(view)
    window.show_all()
    windows.append(window)

    def closed(_view):
        windows.remove(window)
        window.destroy()

    view.connect("close", closed)
    return view


def automation_started(_context, session):
    info = WebKit2.ApplicationInfo()
    info.set_name("resq-wasm-webkit")
    info.set_version(WebKit2.get_major_version(), WebKit2.get_minor_version(), WebKit2.get_micro_version())
    session.set_application_info(info)
    session.connect("create-web-view", create_web_view)


context.connect("automation-started", automation_started)
Gtk.main()
