import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { paginate } from "./paginate.js";

describe("paginate", () => {
  it("yields every item of every page exactly once, in order", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer(), { maxLength: 250 }),
        fc.integer({ min: 1, max: 100 }),
        async (all, size) => {
          const requested: Array<{ limit: number; offset: number }> = [];
          const seen: number[] = [];
          for await (const item of paginate(
            async (page) => {
              requested.push(page);
              return { items: all.slice(page.offset, page.offset + page.limit), total: all.length };
            },
            (res) => res.items,
            size,
          )) {
            seen.push(item);
          }
          expect(seen).toEqual(all);
          expect(requested.every((page) => page.limit === size)).toBe(true);
          expect(requested.length).toBe(Math.max(1, Math.ceil(all.length / size)));
        },
      ),
    );
  });

  it("stops on an empty page even if total claims more", async () => {
    const pages: number[] = [];
    const items: string[] = [];
    for await (const item of paginate(
      async (page) => {
        pages.push(page.offset);
        return { items: page.offset === 0 ? ["a"] : [], total: 10 };
      },
      (res) => res.items,
    )) {
      items.push(item);
    }
    expect(items).toEqual(["a"]);
    expect(pages).toEqual([0, 1]);
  });
});
