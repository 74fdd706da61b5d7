# WebKitGTK with a persistent (on-disk) data manager, via PyGObject; needs DISPLAY (Xvfb :77)
import gi, json, sys, tempfile
gi.require_version('Gtk', '3.0'); gi.require_version('WebKit2', '4.1')
from gi.repository import Gtk, WebKit2, GLib
base = tempfile.mkdtemp(prefix='profile-webkit-')
dm = WebKit2.WebsiteDataManager(base_data_directory=base + '/data', base_cache_directory=base + '/cache')
ctx = WebKit2.WebContext.new_with_website_data_manager(dm)
view = WebKit2.WebView.new_with_context(ctx)
st = view.get_settings(); feats = WebKit2.Settings.get_all_features()
for i in range(feats.get_length()):
    f = feats.get(i)
    if f.get_identifier() in ('StorageAPI', 'StorageAPIEstimate'): st.set_feature_enabled(f, True)
view.set_settings(st)
win = Gtk.Window(); win.add(view); win.show_all()
out = {'engine': 'webkit-persistent', 'version': '%d.%d.%d' % (WebKit2.get_major_version(), WebKit2.get_minor_version(), WebKit2.get_micro_version()), 'profile': base}
phases = ['write', 'read']; state = {'i': 0}
def poll():
    def cb(v, res):
        try:
            r = v.evaluate_javascript_finish(res).to_json(0)
        except Exception as e:
            r = 'null'
        if r and r not in ('null', '"null"'):
            out[phases[state['i']]] = json.loads(r); state['i'] += 1
            if state['i'] < len(phases): view.load_uri('http://localhost:8765/index.html?phase=' + phases[state['i']]); GLib.timeout_add(500, poll)
            else: Gtk.main_quit()
        else: GLib.timeout_add(250, poll)
    view.evaluate_javascript('JSON.stringify(window.__result)', -1, None, None, None, cb)
    return False
view.load_uri('http://localhost:8765/index.html?phase=write'); GLib.timeout_add(500, poll)
GLib.timeout_add_seconds(280, lambda: (out.setdefault('fatal', 'timeout'), Gtk.main_quit()))
Gtk.main()
def unwrap(x): return json.loads(x) if isinstance(x, str) else x
for k in phases:
    if k in out: out[k] = unwrap(out[k])
open('result-webkit-persistent.json', 'w').write(json.dumps(out, indent=1))
print(json.dumps(out, indent=1))
