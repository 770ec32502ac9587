import type { ChildProcess } from 'node:child_process';
export declare const executablePath: string;
export declare const chromiumArgs: string[];
export declare function startDemoServer(options?: { testPages?: boolean }): Promise<{ server: ChildProcess; url: string }>;
