/**
 * The billing account a provider keeps for a workspace, and the counts billing reports
 * (`billing_accounts`).
 *
 * @module
 */

/** What a billing provider (Stripe) knows about a workspace, as its webhooks last said. */
export interface BillingAccountRecord {
  /** One billing account per workspace. */
  readonly workspaceId: string;
  /** e.g. "stripe". */
  readonly provider: string;
  /** The provider's customer id; unique per provider. */
  readonly customerId: string;
  /** Empty when the workspace has no subscription. */
  readonly subscriptionId: string;
  readonly productId: string;
  readonly productName: string;
  /** The provider's subscription status (Stripe: active, trialing, past_due, canceled, ...). */
  readonly status: string;
  readonly cancelAtPeriodEnd: boolean;
  readonly currentPeriodEnd: Date | null;
  readonly metadata: Readonly<Record<string, string>>;
  /**
   * When the provider produced the state stored here (Stripe: the event's `created`): an older
   * webhook delivered late never overwrites a newer state.
   */
  readonly stateAt: Date;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

export interface BillingAccountRepository {
  find(workspaceId: string): Promise<BillingAccountRecord | null>;
  findByCustomer(provider: string, customerId: string): Promise<BillingAccountRecord | null>;
  /**
   * Inserts the workspace's billing account, or replaces every field of it but `createdAt`. Throws
   * UniqueViolationError (`billing_accounts.customer_id`) for a customer of another workspace.
   */
  upsert(account: BillingAccountRecord): Promise<void>;
}

/** How much a workspace holds, as GetBilling reports it. */
export interface WorkspaceCountsRecord {
  readonly members: number;
  readonly teams: number;
  readonly serviceAccounts: number;
  readonly targets: number;
  readonly certificateAuthorities: number;
}

export interface WorkspaceUsageRepository {
  /** Zero for every count of a workspace that does not exist. */
  counts(workspaceId: string): Promise<WorkspaceCountsRecord>;
}
