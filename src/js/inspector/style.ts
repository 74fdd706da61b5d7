// The inspector's look, inside its shadow root: nothing of the page's CSS
// reaches it, and nothing of it reaches the page. Colours follow the
// user's light or dark preference; a page can restyle the parts named by
// `part` (side, main, grid, console) with ::part().

export const CSS = `
:host { display: block; font: 13px/1.4 system-ui, sans-serif; color: #1d2330; background: #fff; border: 1px solid #d5d9e0; border-radius: 8px; overflow: hidden; min-height: 320px; }
@media (prefers-color-scheme: dark) { :host { color: #e4e7ee; background: #161a22; border-color: #2c3341; } }
header { display: flex; gap: 12px; align-items: center; padding: 8px 12px; border-bottom: 1px solid #d5d9e033; background: #7f8ca01a; }
header strong { font-weight: 600; }
header .db { opacity: .75; }
header .spacer { flex: 1; }
button { font: inherit; color: inherit; background: #7f8ca022; border: 1px solid #7f8ca055; border-radius: 5px; padding: 3px 10px; cursor: pointer; }
button:hover:not(:disabled) { background: #7f8ca044; }
button:disabled { opacity: .45; cursor: default; }
.view { display: grid; grid-template-columns: minmax(180px, 240px) 1fr; min-height: 300px; }
.side { border-right: 1px solid #7f8ca033; padding: 8px; overflow: auto; }
.side h3 { font-size: 11px; text-transform: uppercase; letter-spacing: .06em; opacity: .6; margin: 10px 4px 4px; }
.side ul { list-style: none; margin: 0; padding: 0; }
.side .item { display: block; width: 100%; text-align: left; border: 0; background: none; padding: 4px 6px; border-radius: 4px; }
.side button.item[aria-current] { background: #3b6fe033; }
.side small { display: block; opacity: .65; }
.side dl { display: grid; grid-template-columns: auto 1fr; gap: 2px 8px; margin: 4px; }
.side dt { opacity: .6; }
.side dd { margin: 0; overflow-wrap: anywhere; }
.body { min-width: 0; display: flex; flex-direction: column; }
.tabs { display: flex; gap: 4px; padding: 8px 12px 0; }
.tabs button[aria-selected="true"] { background: #3b6fe0; border-color: #3b6fe0; color: #fff; }
.main { padding: 8px 12px; min-width: 0; }
.pager { display: flex; gap: 10px; align-items: center; margin-bottom: 8px; }
.scroll { overflow: auto; max-height: 70vh; }
table { border-collapse: collapse; }
th, td { border-bottom: 1px solid #7f8ca033; padding: 4px 8px; text-align: left; vertical-align: top; max-width: 360px; overflow-wrap: break-word; }
th { position: sticky; top: 0; background: inherit; font-weight: 600; white-space: nowrap; }
td.integer, td.real, td.number { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.null { opacity: .45; font-style: italic; }
.blob { display: flex; flex-direction: column; gap: 2px; }
.blob .meta { display: flex; gap: 6px; font-size: 11px; opacity: .7; }
.preview img { max-width: 128px; max-height: 72px; border-radius: 4px; display: block; }
.preview video { max-width: 320px; max-height: 200px; }
.preview audio { width: 260px; }
code.hex { font: 11px ui-monospace, monospace; opacity: .85; }
.console textarea { width: 100%; box-sizing: border-box; font: 13px ui-monospace, monospace; color: inherit; background: #7f8ca014; border: 1px solid #7f8ca055; border-radius: 5px; padding: 6px; }
.console .actions { display: flex; gap: 8px; align-items: center; margin: 6px 0; }
.console .hint, .console .time, .console .more { opacity: .6; font-size: 12px; }
pre.plan { font: 12px ui-monospace, monospace; }
.error { color: #c62828; }
@media (prefers-color-scheme: dark) { .error { color: #ff8a80; } }
.error strong { font-family: ui-monospace, monospace; }
.picker { padding: 12px; }
.picker ul { list-style: none; padding: 0; }
.picker li { margin: 4px 0; }
.picker form { display: flex; gap: 8px; margin-top: 8px; }
.picker input { font: inherit; padding: 3px 6px; }
.empty { opacity: .65; }
`;
