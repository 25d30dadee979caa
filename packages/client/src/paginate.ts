/**
 * Walks every page of an offset-paged list RPC (the ones with `limit`, `offset` and `total`).
 *
 * @example
 * ```ts
 * for await (const account of paginate(
 *   (page) => client.serviceAccounts.listServiceAccounts({ workspaceId, ...page }),
 *   (res) => res.serviceAccounts,
 * )) console.log(account.name);
 * ```
 */
export async function* paginate<Res extends { total: number }, Item>(
  fetchPage: (page: { limit: number; offset: number }) => Promise<Res>,
  itemsOf: (response: Res) => readonly Item[],
  pageSize = 100,
): AsyncGenerator<Item> {
  let offset = 0;
  for (;;) {
    const response = await fetchPage({ limit: pageSize, offset });
    const items = itemsOf(response);
    yield* items;
    offset += items.length;
    if (items.length === 0 || offset >= response.total) return;
  }
}
