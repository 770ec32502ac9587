// How every browser test starts Chromium (shared with the scripts).
export { chromiumArgs, executablePath } from '../scripts/browser.mjs';
