// The Inspect view: the library's database in resq-wasm/inspector, loaded
// the first time it is opened (the app itself never needs it), mounted
// while the dialog is open and removed when it closes, which revokes the
// object URLs of its previews.

import { $, describeError, toast } from './ui.js';

export function createInspect(db) {
  const dialog = $('#inspect');
  let unmount = null;
  $('#open-inspect').addEventListener('click', async () => {
    try {
      const { mountInspector } = await import('resq-wasm/inspector');
      unmount?.();
      unmount = mountInspector($('#inspect-body'), db);
      if (!dialog.open) dialog.showModal();
    } catch (err) {
      toast(describeError(err), { error: true });
    }
  });
  dialog.querySelector('[data-close]').addEventListener('click', () => dialog.close());
  dialog.addEventListener('close', () => {
    unmount?.();
    unmount = null;
  });
}
