/**
 * @parley/mcp — Parley for LLM agents: the Model Context Protocol over stdio
 * (`parley mcp`), with tools for strong state, claims, leases, locks and replicated
 * entries, and namespaces as resources. See docs/mcp.md.
 */
export { ERROR_HINTS, ToolError } from './errors.js';
export { type CallOptions, DEFAULT_CALL_TIMEOUT_MS, NodeClient, type NodeClientOptions } from './http.js';
export { createMcpServer, MCP_VERSION, type RunMcpOptions, runMcp } from './server.js';
export { DEFAULT_PROGRESS_INTERVAL_MS, type ToolOptions } from './tools.js';
