export { Session } from './session.js';
export {
  decodeSessionToken,
  EMPTY_FRONTIER,
  encodeSessionToken,
  SESSION_LIMITS,
  type SessionFrontier,
} from './token.js';
