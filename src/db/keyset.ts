/**
 * Pages of many short lists read in one statement: a user's followers or followees, a blog's
 * likers, each ordered by (time, id) (kernel/pagination/cursor.ts, KeysetPosition). A request
 * that shows a list of users, each with a page of their followers, asks for one page per user;
 * the loaders collect those pages, and this reads them all at once.
 *
 * The statement is a UNION ALL of one branch per page, each an index range scan that stops
 * after its LIMIT, so a user with a million followers costs a page of rows, not a million
 * (a window function, ROW_NUMBER() OVER (PARTITION BY ...), would number every row of every
 * list before keeping the first few). Each branch is a UNION ALL term with an ORDER BY and a
 * LIMIT of its own, in the form its database accepts (Database.unionTerm).
 *
 * The lists may lag a write a moment (profile and graph reads): they are read where
 * `db.lagging()` says, a replica unless the viewer just wrote.
 */
import type { KeysetPosition } from '../kernel/pagination/cursor';
import type { KeysetFetch } from '../kernel/pagination/page';
import type { Database } from './database';

/** How one kind of list is read. */
export interface KeysetList {
  /**
   * What follows FROM, ending in the WHERE condition that picks one list's rows (its `?` are
   * bound by the caller's parameters), e.g. `tb_follow WHERE follow_user_id = ?`.
   */
  source: string;
  /** The column of an item's time: when the follow or like was made. */
  time: string;
  /** The column of an item's id, which breaks ties of `time`. */
  id: string;
  /** ASC: earliest first; DESC: most recent first. Ties of time go by id in the same direction. */
  order: 'ASC' | 'DESC';
}

/**
 * Pages per statement. SQLite refuses a compound SELECT of more than 500 parts
 * (SQLITE_MAX_COMPOUND_SELECT); the query limits (graphql/limits.ts) keep a request to a few
 * thousand pages at most, so this bound is reached only by such requests.
 */
export const MAX_PAGES_PER_STATEMENT = 500;

type ItemRow = { page: number | string; item_id: number | string; created_at: Date };

/**
 * The items of each fetch, in the list's order: result[i] answers fetches[i]. `params` gives
 * the values of the `?` in `list.source` for one fetch.
 */
export async function selectKeysetPages(
  db: Pick<Database, 'lagging' | 'unionTerm'>,
  list: KeysetList,
  fetches: readonly KeysetFetch[],
  params: (fetch: KeysetFetch) => unknown[],
): Promise<KeysetPosition[][]> {
  const pages: KeysetPosition[][] = fetches.map(() => []);
  const statements: Array<Promise<void>> = [];
  for (let start = 0; start < fetches.length; start += MAX_PAGES_PER_STATEMENT) {
    const chunk = fetches.slice(start, start + MAX_PAGES_PER_STATEMENT);
    const branches = chunk.map((fetch, i) => branchOf(list, fetch, start + i, params(fetch)));
    statements.push(
      db
        .lagging()
        .select<ItemRow>(
          branches
            .map((branch, i) => db.unionTerm(branch.text, 'page, item_id, created_at', `t${i}`))
            .join(' UNION ALL '),
          branches.flatMap((branch) => branch.params),
        )
        .then((rows) => {
          for (const row of rows)
            pages[Number(row.page)].push({ time: row.created_at.getTime(), id: Number(row.item_id) });
        }),
    );
  }
  await Promise.all(statements);
  // A UNION ALL promises no order between or inside its parts' rows once they are combined.
  const sign = list.order === 'ASC' ? 1 : -1;
  for (const page of pages) page.sort((a, b) => sign * (a.time - b.time || a.id - b.id));
  return pages;
}

function branchOf(
  list: KeysetList,
  fetch: KeysetFetch,
  page: number,
  sourceParams: unknown[],
): { text: string; params: unknown[] } {
  const { time, id, order } = list;
  // The first condition bounds the index range scan on time (both databases use it); the
  // second drops the items of the cursor's own millisecond up to and including its item.
  const [bound, strict] = order === 'ASC' ? ['>=', '>'] : ['<=', '<'];
  const after = fetch.after === null ? '' : `AND ${time} ${bound} ? AND (${time} ${strict} ? OR ${id} ${strict} ?)`;
  const at = fetch.after === null ? null : new Date(fetch.after.time);
  return {
    text: `SELECT ? AS page, ${id} AS item_id, ${time} AS created_at FROM ${list.source} ${after} ORDER BY ${time} ${order}, ${id} ${order} LIMIT ?`,
    params: [page, ...sourceParams, ...(fetch.after === null ? [] : [at, at, fetch.after.id]), fetch.limit],
  };
}
