// The package in a fresh Next.js app built by `next build --webpack` and
// served by `next start`: see nextjs-kit.mjs.

import { nextjsTests } from './nextjs-kit.mjs';

nextjsTests('webpack');
