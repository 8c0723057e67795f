/** `parley/mcp`: @parley/mcp, re-exported (see its documentation). */
export * from '@parley/mcp';
