// An OpenID provider for the tests: panva's oidc-provider (certified by the
// OpenID Foundation), unmodified, on 127.0.0.1:$PORT, with its development
// login and consent pages (any login name and password sign in, as that
// account). Its clients come from $OIDC_CLIENTS (JSON, oidc-provider's
// client metadata); its accounts' claims from the JSON file $OIDC_ACCOUNTS,
// read at every sign-in, so a test changes a person's groups between two;
// an account with "disabled": true is refused (access_denied), as a
// provider refuses a person it has barred. Prints "listening" once it is.
import { readFileSync } from "node:fs";
import Provider, { errors } from "oidc-provider";

const port = Number(process.env.PORT);
const accounts = () => JSON.parse(readFileSync(process.env.OIDC_ACCOUNTS, "utf8"));

const provider = new Provider(`http://127.0.0.1:${port}`, {
  clients: JSON.parse(process.env.OIDC_CLIENTS),
  claims: {
    openid: ["sub"],
    email: ["email", "email_verified"],
    profile: ["name", "preferred_username"],
    groups: ["groups"],
  },
  scopes: ["openid", "email", "profile", "groups"],
  pkce: { required: () => true },
  features: { devInteractions: { enabled: true }, rpInitiatedLogout: { enabled: true } },
  cookies: { keys: [process.env.OIDC_COOKIE_KEY] },
  async findAccount(ctx, id) {
    const claims = accounts()[id];
    if (!claims) return undefined;
    if (claims.disabled) throw new errors.AccessDenied("the account is disabled");
    return { accountId: id, claims: async () => ({ sub: id, ...claims }) };
  },
});
provider.listen(port, "127.0.0.1", () => console.log("listening"));
