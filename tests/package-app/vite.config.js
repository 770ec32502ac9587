import { defineConfig } from 'vite';

export default defineConfig({
  // Top-level await in the page and the workers.
  build: { target: 'esnext', outDir: 'dist-vite' },
  worker: { format: 'es' },
});
