// Vitest's browser mode with the Playwright provider, pointed at the
// Chromium already on the machine (CHROMIUM, or /usr/bin/chromium): no
// browser download. Each test file runs in a real page, where resq-wasm
// starts its worker and stores its databases in OPFS as in your app.
import { defineConfig } from 'vitest/config';
import { playwright } from '@vitest/browser-playwright';

export default defineConfig({
  test: {
    browser: {
      enabled: true,
      headless: true,
      provider: playwright({
        launchOptions: {
          executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
          // --no-sandbox only where the tests run as root (a container, CI).
          args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
        },
      }),
      instances: [{ browser: 'chromium' }],
    },
  },
});
