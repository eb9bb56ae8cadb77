import { PREFIX } from '../kernel/resilience.messages';

/** `applyOptions` was given a value for `path`, an option read at startup only, other than the one in force. */
export const NOT_LIVE = (path: string): string =>
  `${PREFIX}: invalid options for applyOptions: '${path}' is read at startup only, and the value given differs from the one in force; restart the application to change it, or leave it out (an option left out keeps its value). Nothing was changed`;
