/** The WebSocket limits: their defaults, and a bad value named with what it got. */
import { ConfigError, loadConfig } from '../../../src/kernel/config';

const refused = (env: Record<string, string>, message: string) => {
  expect(() => loadConfig(env)).toThrow(ConfigError);
  expect(() => loadConfig(env)).toThrow(message);
};

describe('WebSocket limits', () => {
  it('have the documented defaults', () => {
    expect(loadConfig({}).webSockets).toEqual({
      maxSockets: 50_000,
      maxSocketsPerUser: 10,
      maxOperationsPerSocket: 20,
      maxBufferedBytes: 4_194_304,
    });
  });

  it('read MAX_WEBSOCKETS, MAX_WEBSOCKETS_PER_USER, MAX_OPERATIONS_PER_WEBSOCKET and WEBSOCKET_MAX_BUFFERED_BYTES', () => {
    const env = {
      MAX_WEBSOCKETS: '5',
      MAX_WEBSOCKETS_PER_USER: '2',
      MAX_OPERATIONS_PER_WEBSOCKET: '3',
      WEBSOCKET_MAX_BUFFERED_BYTES: '65536',
    };
    expect(loadConfig(env).webSockets).toEqual({
      maxSockets: 5,
      maxSocketsPerUser: 2,
      maxOperationsPerSocket: 3,
      maxBufferedBytes: 65_536,
    });
  });

  it('refuse a value out of range or not a number, naming the variable', () => {
    refused({ MAX_WEBSOCKETS: '0' }, 'MAX_WEBSOCKETS must be between 1 and 1000000 (got 0)');
    refused({ MAX_WEBSOCKETS_PER_USER: 'ten' }, 'MAX_WEBSOCKETS_PER_USER must be a whole number (got "ten")');
    refused(
      { MAX_OPERATIONS_PER_WEBSOCKET: '1001' },
      'MAX_OPERATIONS_PER_WEBSOCKET must be between 1 and 1000 (got 1001)',
    );
    refused(
      { WEBSOCKET_MAX_BUFFERED_BYTES: '1024' },
      'WEBSOCKET_MAX_BUFFERED_BYTES must be between 65536 and 1073741824 (got 1024)',
    );
  });
});
