/** `parley/check`: @parley/check, re-exported (see its documentation). */
export * from '@parley/check';
