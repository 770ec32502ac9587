// How every browser test starts Chromium: Debian's build, never a
// downloaded one, with nothing that reaches the network.
export const executablePath = '/usr/bin/chromium';
export const chromiumArgs = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
