/**
 * The replica health check's statements and readings (src/db/replication.ts) for both server
 * families: the statement each version is given, SHOW REPLICA STATUS rows under MySQL 8.4's and
 * MariaDB's column names, and GTID positions of both. The MariaDB side also runs for real in the
 * replica pass (test/integration/db/replica-*.test.ts); MySQL 8.4's answers here are as its manual
 * documents them.
 */
import {
  covers,
  familyOf,
  parseGtidSet,
  readReplicationThreads,
  readServerVariables,
  replicaStatusStatement,
} from '../../../src/db/replication';

describe('the statement each server is given', () => {
  it.each([
    ['8.4.3', 'mysql', 'SHOW REPLICA STATUS'],
    ['8.0.22', 'mysql', 'SHOW REPLICA STATUS'],
    ['9.1.0', 'mysql', 'SHOW REPLICA STATUS'],
    ['8.0.21', 'mysql', 'SHOW SLAVE STATUS'],
    ['5.7.44-log', 'mysql', 'SHOW SLAVE STATUS'],
    ['10.11.19-MariaDB-0+deb12u1', 'mariadb', 'SHOW REPLICA STATUS'],
    ['11.4.4-MariaDB-ubu2404-log', 'mariadb', 'SHOW REPLICA STATUS'],
    ['10.5.1-MariaDB', 'mariadb', 'SHOW REPLICA STATUS'],
    ['10.4.34-MariaDB', 'mariadb', 'SHOW SLAVE STATUS'],
  ])('%s is %s and gets %s', (version, family, statement) => {
    expect(familyOf(version)).toBe(family);
    expect(replicaStatusStatement(version)).toBe(statement);
  });
});

describe('server variables', () => {
  it("a MariaDB replica's applied position is gtid_slave_pos, a primary's committed one gtid_binlog_pos", () => {
    const variables = readServerVariables([
      { Variable_name: 'gtid_binlog_pos', Value: '0-2-9' },
      { Variable_name: 'gtid_slave_pos', Value: '0-1-7' },
      { Variable_name: 'version', Value: '11.4.4-MariaDB' },
    ]);
    expect(variables).toEqual({ version: '11.4.4-MariaDB', family: 'mariadb', committed: '0-2-9', applied: '0-1-7' });
  });

  it("MySQL's is gtid_executed for both", () => {
    const variables = readServerVariables([
      { Variable_name: 'gtid_executed', Value: '3e11fa47-71ca-11e1-9e33-c80aa9429562:1-77' },
      { Variable_name: 'version', Value: '8.4.3' },
    ]);
    expect(variables).toEqual({
      version: '8.4.3',
      family: 'mysql',
      committed: '3e11fa47-71ca-11e1-9e33-c80aa9429562:1-77',
      applied: '3e11fa47-71ca-11e1-9e33-c80aa9429562:1-77',
    });
  });
});

describe('replication threads', () => {
  it("reads MySQL 8.4's column names", () => {
    const row = {
      Replica_IO_Running: 'Yes',
      Replica_SQL_Running: 'Yes',
      Seconds_Behind_Source: 3,
      Last_IO_Error: '',
      Last_SQL_Error: '',
    };
    expect(readReplicationThreads(row)).toEqual({
      running: true,
      io: 'Yes',
      sql: 'Yes',
      errors: '',
      secondsBehindMs: 3000,
    });
  });

  it("reads MariaDB's (the old names), a stopped thread and its error", () => {
    const row = {
      Slave_IO_Running: 'Yes',
      Slave_SQL_Running: 'No',
      Seconds_Behind_Master: null,
      Last_IO_Error: '',
      Last_SQL_Error: "Error 'Duplicate entry' on query",
    };
    expect(readReplicationThreads(row)).toEqual({
      running: false,
      io: 'Yes',
      sql: 'No',
      errors: "Error 'Duplicate entry' on query",
      secondsBehindMs: null,
    });
  });

  it('a connecting receiver is not running', () => {
    expect(
      readReplicationThreads({
        Replica_IO_Running: 'Connecting',
        Replica_SQL_Running: 'Yes',
        Seconds_Behind_Source: null,
      }).running,
    ).toBe(false);
  });
});

describe('GTID sets', () => {
  const uuid = '3e11fa47-71ca-11e1-9e33-c80aa9429562';
  const other = '4f22fb58-82db-22f2-af44-d91bba53a673';

  it("MariaDB: a replica covers every position of the primary's at or below its own seq, per domain", () => {
    const applied = parseGtidSet('0-1-7,1-2-3', 'mariadb');
    expect(covers(applied, parseGtidSet('0-1-7', 'mariadb'))).toBe(true);
    expect(covers(applied, parseGtidSet('0-2-5,1-2-3', 'mariadb'))).toBe(true);
    expect(covers(applied, parseGtidSet('0-1-8', 'mariadb'))).toBe(false);
    expect(covers(applied, parseGtidSet('2-1-1', 'mariadb'))).toBe(false);
    expect(covers(applied, parseGtidSet('', 'mariadb'))).toBe(true);
  });

  it('MySQL: ranges per server uuid, across the line breaks MySQL puts after commas, with gaps', () => {
    const applied = parseGtidSet(`${uuid}:1-5:7-10,\n${other}:1-3`, 'mysql');
    expect(covers(applied, parseGtidSet(`${uuid}:1-5`, 'mysql'))).toBe(true);
    expect(covers(applied, parseGtidSet(`${uuid}:1-5:7-9,\n${other}:2`, 'mysql'))).toBe(true);
    // Transaction 6 is missing: a multi-threaded applier's gap.
    expect(covers(applied, parseGtidSet(`${uuid}:1-10`, 'mysql'))).toBe(false);
    expect(covers(applied, parseGtidSet(`${other}:1-4`, 'mysql'))).toBe(false);
  });

  it('MySQL: adjacent ranges join, upper-case uuids match lower-case ones, and tagged GTIDs are a source of their own', () => {
    const applied = parseGtidSet(`${uuid.toUpperCase()}:1-5:6-9:audit:1-2`, 'mysql');
    expect(covers(applied, parseGtidSet(`${uuid}:1-9`, 'mysql'))).toBe(true);
    expect(covers(applied, parseGtidSet(`${uuid}:audit:2`, 'mysql'))).toBe(true);
    expect(covers(applied, parseGtidSet(`${uuid}:audit:3`, 'mysql'))).toBe(false);
  });
});
