/**
 * The not-found errors of what a grant names: the target whose principal it is, and a team as
 * its subject. Here, below the targets and teams areas, because both those areas and the grants
 * raise them.
 *
 * @module
 */
import { NotFoundError } from "../errors.js";

export const targetNotFound = (id: string) =>
  new NotFoundError(`target ${id} not found`, { reason: "TARGET_NOT_FOUND" });

export const teamNotFound = (id: string) =>
  new NotFoundError(`team ${id} not found`, { reason: "TEAM_NOT_FOUND" });
