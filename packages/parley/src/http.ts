/** `parley/http`: @parley/server, re-exported (see its documentation). */
export * from '@parley/server';
