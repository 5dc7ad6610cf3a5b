// Unit tests of the pure parts of the panel (protocol → transcript model); no DOM needed.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: { include: ['test/**/*.test.ts'], environment: 'node' }
});
