/** How the tests start Debian's headless Chromium through playwright-core (no browser download). */
export const CHROMIUM_LAUNCH = {
  executablePath: "/usr/bin/chromium",
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
  ],
} as const;
