/**
 * The profile picture rule: a picture is a URL other members' pages load and show, so only a web
 * address will do: `https:`, or `http:` while the platform itself is reached over loopback (a
 * developer's machine). At most 2048 characters; empty means no picture.
 *
 * @module
 */
import { accountConfig } from "../auth/account-config.js";
import { InvalidArgumentError } from "../errors.js";
import type { Services } from "../operations/services.js";
import { pictureUrlMaxLength } from "../validation/bounds.js";
import { codePointLength, isLoopbackUrl, webUrlProblem } from "../validation/rules.js";

/** Why `value` may not be a profile picture, or null when it may. */
export function checkPictureUrl(value: string, services: Services): string | null {
  if (value === "") return null;
  const length = codePointLength(value);
  if (length > pictureUrlMaxLength)
    return `must be at most ${pictureUrlMaxLength} characters (got ${length})`;
  return webUrlProblem(value, { allowHttp: isLoopbackUrl(accountConfig(services).publicBaseUrl) });
}

/** `value` as a profile picture, or `invalid_argument` naming the field and the expected form. */
export function pictureUrl(value: string, services: Services): string {
  const problem = checkPictureUrl(value, services);
  if (problem === null) return value;
  throw new InvalidArgumentError(`invalid request: picture: ${problem}`, {
    violations: [{ field: "picture", description: problem }],
  });
}
