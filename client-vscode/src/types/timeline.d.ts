// VS Code's Timeline API (the "timeline" API proposal, used by its own Git timeline). The
// extension declares it in package.json's enabledApiProposals and uses it only when
// `vscode.workspace.registerTimelineProvider` exists at run time (VS Code started with
// --enable-proposed-api engram.engram, or a build that allows it); otherwise the Checkpoints
// view and "engram: Show Timeline" remain.
import "vscode";

declare module "vscode" {
  export interface EngramTimelineItem {
    timestamp: number;
    label: string;
    id?: string;
    iconPath?: ThemeIcon;
    description?: string;
    tooltip?: string | MarkdownString;
    command?: Command;
    contextValue?: string;
    accessibilityInformation?: AccessibilityInformation;
  }

  export interface EngramTimeline {
    readonly paging?: { readonly cursor: string | undefined };
    readonly items: readonly EngramTimelineItem[];
  }

  export interface EngramTimelineOptions {
    cursor?: string;
    limit?: number | { timestamp: number; id?: string };
  }

  export interface EngramTimelineProvider {
    onDidChange?: Event<{ uri: Uri; reset?: boolean } | undefined>;
    readonly id: string;
    readonly label: string;
    provideTimeline(uri: Uri, options: EngramTimelineOptions, token: CancellationToken): ProviderResult<EngramTimeline>;
  }
}
