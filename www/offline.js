// Offline: registers the service worker (sw.js) and waits until it controls
// this page before the app opens its database, so that the package's worker,
// wasm and SharedWorker are fetched through it, and kept.

const FIRST_INSTALL_WAIT = 5000; // ms; past that the app goes on without it

/**
 * Resolves once the page is controlled (or cannot be: no service workers, a
 * hard reload, an install that fails or takes too long). Resolves to
 * whether it is.
 */
export async function takeControl() {
  if (!('serviceWorker' in navigator)) return false;
  try {
    const registration = await navigator.serviceWorker.register('sw.js', { type: 'classic' });
    // An active worker that does not control the page: a hard reload, which
    // bypasses service workers by design. Otherwise it is the first visit,
    // and the new worker claims this page as it activates.
    if (!navigator.serviceWorker.controller && !registration.active) {
      await new Promise((resolve) => {
        navigator.serviceWorker.addEventListener('controllerchange', resolve, { once: true });
        setTimeout(resolve, FIRST_INSTALL_WAIT);
      });
    }
  } catch (err) {
    // Offline, the check for a newer sw.js fails; the worker in control goes on.
    if (!navigator.serviceWorker.controller) console.warn('no service worker, so no offline use:', err);
  }
  return !!navigator.serviceWorker.controller;
}

/**
 * Asks the service worker to keep everything this page loaded (it loaded
 * some of it before the worker was in control), and resolves once it has,
 * with every fetch it has seen so far. After that, a reload works offline.
 */
export function keepForOffline() {
  const worker = navigator.serviceWorker?.controller;
  if (!worker) return Promise.resolve(false);
  const ours = (url) => url.startsWith(`${location.origin}/`) && !new URL(url).pathname.includes('/media/');
  const urls = [location.href.split('#')[0], ...performance.getEntriesByType('resource').map((e) => e.name)].filter(ours);
  const { port1, port2 } = new MessageChannel();
  const answer = new Promise((resolve) => (port1.onmessage = ({ data }) => resolve(!data.error)));
  worker.postMessage({ cache: [...new Set(urls)] }, [port2]);
  return answer;
}
