/** `parley/browser`: @parley/browser, re-exported — a browser tab as a peer (docs/browser.md). */
export * from '@parley/browser';
