/** `parley/cli`: @parley/cli, re-exported (see its documentation). */
export * from '@parley/cli';
